"""The agents people use (Claude Code, Codex): importing their sessions and writing rules where they read their instructions.

Nothing is imported here: each module is imported by its full name, so a
lean caller (the first stage) pays only for what it names.
"""
