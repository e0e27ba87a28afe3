"""The ways people reach errata: the ``errata`` CLI, the web chat, the Slack bot. Each is thin: text in,
a call of ``Assistant``, its ``Answer`` out. Must not hold retrieval or drafting logic."""
