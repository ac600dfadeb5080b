"""Environment checks: packages against the lock; imports and libraries in child processes."""
