"""Text protocols and chat types shared by every text env, the runner, the MCP and A2A servers.

Low in the layer order: tools, tasks and the evaluation machinery import from here, never the reverse.
"""
