"""`python -m envcheck.verify.facts` prints this interpreter's facts as JSON."""

from __future__ import annotations

import json

from . import collect_node_facts, facts_to_dict

print(json.dumps(facts_to_dict(collect_node_facts()), indent=2))
