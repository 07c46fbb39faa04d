"""Reading conversations: the harness's transcripts, the moments a person stepped in, and the session files other agents write.

Nothing is imported here: each module is imported by its full name, so a
lean caller (the first stage) pays only for what it names.
"""
