from atlas.cli import main

raise SystemExit(main())
