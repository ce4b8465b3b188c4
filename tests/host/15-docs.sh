#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Documentation/*.rst parsed with docutils (python3-docutils, what Sphinx
# builds on) at warning level: a title underline shorter than its title, a
# table whose border runs into its first row, a column's text in the gap,
# a list ending without a blank line all print as they would in the
# kernel's "make htmldocs", and fail here. Sphinx's own directives
# (toctree) are accepted as such. One point per file.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3

files=("$repo"/Documentation/*.rst)
echo "1..${#files[@]}"
if ! "$py" -c 'import docutils' 2>/dev/null; then
	# tools/deps installs it: its absence is a failure, not a skip.
	for i in "${!files[@]}"; do
		echo "not ok $((i + 1)) - ${files[i]#"$repo"/}: no python3-docutils (tools/deps installs it)"
	done
	exit 1
fi

rc=0
for i in "${!files[@]}"; do
	f=${files[i]}
	if out=$("$py" - "$f" 2>&1 <<'EOF'
import io
import sys

import docutils.core
from docutils.parsers.rst import Directive, directives


class SphinxOnly(Directive):
    """toctree and the like: Sphinx's, taken as they are."""
    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = {'maxdepth': directives.unchanged,
                   'caption': directives.unchanged}

    def run(self):
        return []


directives.register_directive('toctree', SphinxOnly)
path = sys.argv[1]
report = io.StringIO()
with open(path, encoding='utf-8') as f:
    docutils.core.publish_doctree(
        f.read(), source_path=path,
        settings_overrides={'warning_stream': report, 'report_level': 2,
                            'halt_level': 5})
text = report.getvalue().strip()
if text:
    print(text)
    sys.exit(1)
EOF
	); then
		echo "ok $((i + 1)) - ${f#"$repo"/} parses without a warning"
	else
		echo "not ok $((i + 1)) - ${f#"$repo"/} parses without a warning"
		printf '%s\n' "$out" | head -n 30 | sed 's/^/# /'
		rc=1
	fi
done
exit $rc
