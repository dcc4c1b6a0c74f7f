import os
import sys

# The sample kernels live with the ir tests; both test folders use them.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "ir"))
