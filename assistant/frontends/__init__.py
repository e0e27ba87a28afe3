"""The ways people reach errata: the ``errata`` CLI, the web chat, the Slack bot, ``errata run``, the
exception hooks (``assistant.install()``, ``%load_ext assistant``), the pytest plugin and the MCP server.
Each is thin: text in, a call of ``Assistant``, its ``Answer`` out. Must not hold retrieval or drafting logic.
"""
