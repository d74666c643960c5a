# Sourced by the TLC tests: exits 77 (CTest: skipped, never passed) with the
# reason unless TLA2TOOLS_JAR names a tla2tools.jar and java is on PATH.
if [ -z "${TLA2TOOLS_JAR:-}" ]; then
  echo "SKIPPED: set TLA2TOOLS_JAR to the path of a tla2tools.jar (TLC 1.7 or later) to run TLC"
  exit 77
fi
if [ ! -f "$TLA2TOOLS_JAR" ]; then
  echo "SKIPPED: TLA2TOOLS_JAR=$TLA2TOOLS_JAR is not a file"
  exit 77
fi
if ! command -v java >/dev/null; then
  echo "SKIPPED: no java on PATH to run TLC"
  exit 77
fi
