"""errata's tests."""

# How often the tests' local HTTP servers look for shutdown(): the default half second, paid at every
# server's close, added about 20 s to the fast tier.
SHUTDOWN_POLL_S = 0.02
