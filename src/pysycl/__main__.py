import sys

from pysycl.cli.main import main

sys.exit(main())
