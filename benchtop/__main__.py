from benchtop.commands.run import main

raise SystemExit(main())
