from benchtop.cli import main

raise SystemExit(main())
