import sys

from certsym.check.main import main

sys.exit(main())
