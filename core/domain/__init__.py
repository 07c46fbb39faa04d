"""The domain model: the types the store persists and the rules their names
follow, on the lowest floor of `core`.

The store keeps rules and reflections, the passes make them, the gate and
the editor read them; all of them agree on what a rule, a domain name and a
reflection are by importing them from here. This package imports nothing of
the project but `errors` and `identity`, so no floor above has to reach up
for a shape it stores. Each module is imported by its full name.
"""
