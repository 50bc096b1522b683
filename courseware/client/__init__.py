"""gpucourse: the course's command-line client.

It talks only to the site's public JSON API (`/api/v1/`) with an API token, and uses only the
standard library, so it runs wherever Python 3.11 does, with nothing of the server installed
(no Django, no settings). Entry points: `python -m courseware.client` and the `gpucourse`
console script; see `gpucourse --help` and the README's "Command-line client".
"""

PROGRAM = "gpucourse"
