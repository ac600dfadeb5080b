"""Another uid for the tests that need one (a stranger on a job's port, a GPU holder, a process
tree of someone else's): uid and gid nobody through setpriv, as root."""

# uid and gid nobody, no groups; CAP_DAC_READ_SEARCH only so that it can run the test's venv's
# python (under /root, mode 0700) and read its scripts
AS_NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search")
