"""Drive Lanyard's Applications API with Debian's unmodified python-gitlab (3.12); print what it saw.

Run by test/clients/applications.test.ts against a real HTTP server. Environment: LANYARD_URL,
LANYARD_ADMIN_PAT (an administrator, scope api), LANYARD_USER_PAT (a user, scope api). Prints one
JSON document; the test asserts every value. Any exception fails the run (non-zero exit).
"""
import json
import os

import gitlab

url = os.environ["LANYARD_URL"]
gl = gitlab.Gitlab(url, private_token=os.environ["LANYARD_ADMIN_PAT"])
out = {}

# gl.applications.create / list / delete, as python-gitlab 3.12 has them.
created = gl.applications.create(
    {"name": "Terraform", "redirect_uri": "https://ci.example/cb", "scopes": "api read_user", "confidential": True}
)
out["created"] = created.attributes
out["listed"] = [a.attributes for a in gl.applications.list()]

# What 3.12 lacks, through the same authenticated session: renew-secret and (beyond GitLab) update.
out["renewed"] = gl.http_post(f"/applications/{created.id}/renew-secret")
out["updated"] = gl.http_put(f"/applications/{created.id}", post_data={"name": "Terraform 2", "scopes": "read_api"})

# A second application, deleted through its object; the first through the manager.
second = gl.applications.create({"name": "Other", "redirect_uri": "http://127.0.0.1/cb", "scopes": "openid"})
second.delete()
gl.applications.delete(created.id)
out["after_delete"] = [a.attributes for a in gl.applications.list()]

# Errors surface as python-gitlab's exceptions with GitLab's status and message.
try:
    gl.applications.delete(created.id)
except gitlab.exceptions.GitlabDeleteError as e:
    out["delete_missing"] = {"code": e.response_code, "message": e.error_message}
try:
    gl.applications.create({"name": "Bad", "redirect_uri": "https://x.example/#f", "scopes": "api"})
except gitlab.exceptions.GitlabCreateError as e:
    out["create_bad"] = {"code": e.response_code, "message": e.error_message}
user = gitlab.Gitlab(url, private_token=os.environ["LANYARD_USER_PAT"])
try:
    user.applications.list()
except gitlab.exceptions.GitlabListError as e:
    out["list_as_user"] = {"code": e.response_code, "message": e.error_message}

print(json.dumps(out))
