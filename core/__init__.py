"""mecha's learning core: the domain, with no server in it.

Reflections drawn from the moments a person stepped in, the bounded rule sets
they consolidate into, the store that keeps both as inspectable files, the
paired gate that judges candidate changes, and the appraisal that derives how
a run went. Nothing here imports a server framework; `mecha.protocol` and
`mecha.sidecar` build on this package, never the other way round.

Importing this package is cheap on purpose: the harness endpoint starts for
every agent run, so submodules are imported where they are used.
"""
