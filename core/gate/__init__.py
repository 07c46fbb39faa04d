"""Measuring a change: the candidate gate, the appraisal of a run, goals and run records.

Nothing is imported here: each module is imported by its full name, so a
lean caller (the first stage) pays only for what it names.
"""
