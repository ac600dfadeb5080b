"""verify node: one machine's facts judged by pure checks; --prefix, --level, --nagios."""
