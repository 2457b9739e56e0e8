# Checks that a vendored file is the one its VERSION file records (the
# "sha256:" line scripts/vendor-echarts wrote), so that an edit by hand, or a
# refresh that skipped the script, fails the tests. Run with cmake -P:
#   -DFILE=path/to/echarts.min.js -DVERSION=path/to/VERSION
file(SHA256 "${FILE}" actual)
file(STRINGS "${VERSION}" line REGEX "^sha256: ")
string(REGEX REPLACE "^sha256: *" "" recorded "${line}")
if(NOT actual STREQUAL recorded)
  message(FATAL_ERROR "${FILE}: sha256 ${actual}, but ${VERSION} records '${recorded}': "
                      "refresh it with scripts/vendor-echarts")
endif()
message(STATUS "${FILE}: sha256 ${actual} as recorded")
