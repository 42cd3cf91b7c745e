from site_builder.cli import main

raise SystemExit(main())
