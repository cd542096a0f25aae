from gitfs.cli import main

raise SystemExit(main())
