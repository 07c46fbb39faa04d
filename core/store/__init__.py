"""The learning store: plain files under one owner-only directory, and every path under its root.

Nothing is imported here: each module is imported by its full name, so a
lean caller (the first stage) pays only for what it names.
"""
