"""The person's machine, as the rest of the code asks about it.

Three things the sidecar reads off the machine it runs on, each kept in one
module so that no other module spells them:

- `agents` — the agents this project works with (Claude Code, Codex), one
  row each: their names in every spelling the code and the wire use, where
  they keep sessions, hooks, instruction files and skills, the program a
  person types, the text they record in the person's voice. Adding an agent
  starts with a row there. It imports only the standard library (the
  session-start hook, which every agent session waits on, reads it).
- `settings` — the config file (`$MECHA_SIDECAR_CONFIG`, else
  `~/.mecha/sidecar.toml`): its path, the one reader of its tables and the
  one writer that changes a table and keeps every other byte.
- `installed` — which agents' command lines are installed and run here.

Before this package these facts were spread over nine modules in four
packages, one agent spelled three ways, and the config file read in three
packages; the structure test now holds every other module to asking here.

This package's `__init__` imports nothing, so reading the table costs no
more than the table.
"""
