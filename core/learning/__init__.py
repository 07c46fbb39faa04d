"""How a lesson is learned: reflections, rules, the reflect and learn passes, and proposals.

Nothing is imported here: each module is imported by its full name, so a
lean caller (the first stage) pays only for what it names.
"""
