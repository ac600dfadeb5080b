from envcheck.entry import main

raise SystemExit(main())
