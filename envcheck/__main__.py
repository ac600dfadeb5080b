from envcheck.cli import main

raise SystemExit(main())
