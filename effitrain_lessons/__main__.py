from effitrain_lessons.cli import main

raise SystemExit(main())
