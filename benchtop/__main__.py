from benchtop.commands import main

raise SystemExit(main())
