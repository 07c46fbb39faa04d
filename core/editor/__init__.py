"""What an editor shows about a rules document, decided here and pure.

Nothing is imported here: each module is imported by its full name, so a
lean caller (the first stage) pays only for what it names.
"""
