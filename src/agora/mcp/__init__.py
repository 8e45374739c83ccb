"""The MCP protocol layer, sans-io: bytes or messages in, messages out. Never imports trio."""
