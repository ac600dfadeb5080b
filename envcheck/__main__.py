from envcheck.early import main

raise SystemExit(main())
