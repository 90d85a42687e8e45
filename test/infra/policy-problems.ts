// The house rules every IAM policy document of the stack is held to (infra/policies.ts): no
// wildcard action, secrets by exact ARN, a "*" resource only for Lambda's VPC ENI management.
import { type PolicyDocument, VPC_ENI_ACTIONS } from '../../infra/policies';

const list = (v: string | string[]) => (Array.isArray(v) ? v : [v]);

/** Every violation of the house rules in a document; [] when it is clean. */
export function findPolicyProblems(doc: PolicyDocument): string[] {
  const problems: string[] = [];
  for (const [i, s] of doc.Statement.entries()) {
    const where = s.Sid ?? `statement ${i}`;
    if (s.Effect !== 'Allow') continue;
    for (const action of list(s.Action)) {
      if (action.includes('*')) problems.push(`${where}: wildcard action ${action}`);
    }
    const resources = list(s.Resource ?? []);
    if (!resources.length) problems.push(`${where}: no resource`);
    for (const resource of resources) {
      const secretAction = list(s.Action).some((a) => a.startsWith('secretsmanager:'));
      if (secretAction && (resource.includes('*') || !resource.startsWith('arn:'))) {
        problems.push(`${where}: secret access must name exact ARNs (got ${resource})`);
      }
      if (resource === '*' && !list(s.Action).every((a) => VPC_ENI_ACTIONS.includes(a))) {
        problems.push(`${where}: "*" resource for actions other than Lambda's VPC ENI management`);
      }
    }
  }
  return problems;
}
