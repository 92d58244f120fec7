#!/usr/bin/env python3
"""Checks a LivePush events file (JSON Lines) against docs/events.schema.json.

Usage: validate_events.py SCHEMA EVENTS.jsonl
Prints one line per invalid event ("line N: message") and a last line "checked N events, M invalid";
exit status 0 when every line is valid, 1 otherwise. Uses Debian's python3-jsonschema.
"""
import json
import sys

import jsonschema

schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
validator = jsonschema.Draft202012Validator(schema)
count = invalid = 0
with open(sys.argv[2]) as events:
    for number, line in enumerate(events, 1):
        count += 1
        try:
            event = json.loads(line)
        except ValueError as error:
            invalid += 1
            print(f"line {number}: not JSON: {error}")
            continue
        for error in validator.iter_errors(event):
            invalid += 1
            print(f"line {number}: {error.message[:200]}")
print(f"checked {count} events, {invalid} invalid")
sys.exit(1 if invalid or count == 0 else 0)
