"""The debate tool handlers, by theme: each builds one command (or one read) and renders
its result. `agora.toolsets.debate.tools` maps tool names onto them."""
