"""Provisioning: create an environment from a lock (install) and images that carry one."""
