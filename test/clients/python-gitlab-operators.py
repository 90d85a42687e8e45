"""Drive Lanyard's operator API with Debian's unmodified python-gitlab (3.12) and print what it saw:
users, personal access tokens (with raw gl.http_* calls through the same session where 3.12 has
no method: get, self, rotate), block/unblock, and the audit trail.

Run by test/clients/python-gitlab-operators.test.ts against a real HTTP server. Environment:
LANYARD_URL, LANYARD_ADMIN_PAT (root, scope api), LANYARD_USER_PAT (alice, scope api), BOB_ID,
EXPIRES_AT (a date a month ahead). Prints one JSON document; the test asserts every value.
"""
import json
import os
import sys
import warnings

import gitlab

warnings.simplefilter("error")

url = os.environ["LANYARD_URL"]
bob_id = int(os.environ["BOB_ID"])
expires_at = os.environ["EXPIRES_AT"]
admin = gitlab.Gitlab(url, private_token=os.environ["LANYARD_ADMIN_PAT"])
alice = gitlab.Gitlab(url, private_token=os.environ["LANYARD_USER_PAT"])
out = {}


def error(fn):
    try:
        fn()
        return "no error?!"
    except gitlab.exceptions.GitlabError as e:
        return {"status": e.response_code, "message": e.error_message}


def who(token):
    """Whose token it is, or the error python-gitlab raised for it."""
    gl = gitlab.Gitlab(url, private_token=token)
    try:
        gl.auth()
        return gl.user.username
    except gitlab.exceptions.GitlabError as e:
        return {"status": e.response_code, "message": e.error_message}


# Users: by username (list), by id (get); the admin and public shapes.
found = admin.users.list(username="bob")
out["users_list_admin"] = [{"id": u.id, "username": u.username, "is_admin": u.is_admin} for u in found]
out["users_list_public_keys"] = sorted(alice.users.list(username="BOB")[0].attributes.keys())
bob = admin.users.get(bob_id)
out["users_get"] = {"username": bob.username, "email": bob.email, "state": bob.state, "highest_role": bob.highest_role}
out["users_all"] = [u.username for u in admin.users.list(get_all=True, per_page=1)]

# An administrator creates a token for bob (python-gitlab sends the scopes comma-separated).
created = bob.personal_access_tokens.create({"name": "ci", "scopes": ["api", "read_user"], "expires_at": expires_at})
first = created.token
out["created"] = {"name": created.name, "scopes": created.scopes, "expires_at": created.expires_at, "user_id": created.user_id}
out["created_works"] = who(first)

# gl.personal_access_tokens: list (user_id filter), and what 3.12 lacks through the same session.
out["pat_list"] = [{"id": t.id, "name": t.name, "active": t.active} for t in admin.personal_access_tokens.list(user_id=bob_id)]
out["pat_get"] = {k: admin.http_get(f"/personal_access_tokens/{created.id}")[k] for k in ("id", "name", "revoked")}
bob_gl = gitlab.Gitlab(url, private_token=first)
out["pat_self"] = bob_gl.http_get("/personal_access_tokens/self")["id"] == created.id

# Rotation twice (self, then by id), then the first token is presented again: the chain dies.
second = bob_gl.http_post("/personal_access_tokens/self/rotate")
third = admin.http_post(f"/personal_access_tokens/{second['id']}/rotate", post_data={"expires_at": expires_at})
out["rotated"] = {
    "ids_increase": created.id < second["id"] < third["id"],
    "third_expires_at": third["expires_at"],
    "third_works": who(third["token"]),
}
out["first_again"] = who(first)
out["third_after"] = who(third["token"])
out["chain_revoked"] = [t.revoked for t in admin.personal_access_tokens.list(user_id=bob_id)]

# Revoking: the manager's delete and the object's delete.
extra = bob.personal_access_tokens.create({"name": "one-off", "scopes": ["read_api"]})
admin.personal_access_tokens.delete(extra.id)
out["deleted"] = admin.http_get(f"/personal_access_tokens/{extra.id}")["revoked"]
spare = bob.personal_access_tokens.create({"name": "spare", "scopes": ["read_api"]})
listed = [t for t in admin.personal_access_tokens.list(user_id=bob_id) if t.id == spare.id][0]
listed.delete()
out["object_deleted"] = who(spare.token)
out["delete_foreign"] = error(lambda: alice.personal_access_tokens.delete(created.id))

# block / unblock through the CLI's domain function: bob's fresh token stops and comes back.
live = bob.personal_access_tokens.create({"name": "live", "scopes": ["api"]}).token
out["block"] = [bob.block(), bob.state, bob.block()]
out["blocked_token"] = who(live)
out["unblock"] = [bob.unblock(), bob.state, bob.unblock()]
out["unblocked_token"] = who(live)
out["block_as_user"] = error(lambda: alice.users.get(bob_id, lazy=True).block())

# The audit trail.
events = admin.audit_events.list(per_page=3, page=1)
out["audit_latest"] = [e.details["event_name"] for e in events]
one = admin.audit_events.get(events[0].id)
out["audit_get"] = {"entity_type": one.entity_type, "entity_id": one.entity_id, "author_id": one.author_id}
out["audit_bob"] = sorted({e.details["event_name"] for e in admin.audit_events.list(entity_type="User", entity_id=bob_id, get_all=True)})
out["audit_as_user"] = error(lambda: alice.audit_events.list())

json.dump(out, sys.stdout)
