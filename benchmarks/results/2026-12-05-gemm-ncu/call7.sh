#!/usr/bin/env bash
# device call 7 (session 59, issue #20): call 5 again on an H200 (its first this session), its results as call7.
CALL=call7 exec bash "$(dirname "$0")/call5.sh"
