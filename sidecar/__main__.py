from mecha.sidecar.cli import main

raise SystemExit(main())
