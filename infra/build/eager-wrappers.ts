// Marks the module wrappers of an esbuild CommonJS bundle as called at load, so that V8 compiles
// each one once instead of twice.
//
// esbuild wraps every CommonJS module (and every ES module reached through require()) in a function
// that runs on the module's first require(): `A((exports, module) => { … })`. V8 compiles a
// function literal lazily: it pre-parses it when it compiles the script around it, then parses it
// again in full on its first call. Nearly all of the API function's modules are required during
// its first request, so their bodies were parsed twice at every cold start (about 50 M of its
// ~1,190 M instructions, counted with callgrind). V8 compiles a function eagerly, in one pass,
// when it is written `(function …)` — its heuristic for "called right away" — which is what this
// rewrites the wrappers to: `A((function (exports, module) { … }))`. Only the wrapper changes,
// and only where an arrow and a function mean the same: a wrapper whose own body reads `this`,
// `arguments`, `new.target` or `super` is left as it is.
import ts from 'typescript';

/** esbuild's runtime helpers, as its minifier writes them: __commonJS and __esm. */
const HELPERS = [
  /var ([\w$]+)=\(([\w$]+),([\w$]+)\)=>\(\)=>\{try\{return \3\|\|\2\(\(\3=\{exports:\{\}\}\)\.exports,\3\)/,
  /var ([\w$]+)=\(([\w$]+),([\w$]+),([\w$]+)\)=>\(\)=>\{if\(\4\)throw \4\[0\];try\{return \2&&\(\3=\2\(\2=0\)\)/,
];

export interface EagerWrappersResult {
  code: string;
  /** How many wrappers were rewritten, and how many were left lazy (they read `this` or the like). */
  rewritten: number;
  kept: number;
}

/** Rewrites a minified esbuild CommonJS bundle's module wrappers to `(function …)`. */
export function eagerModuleWrappers(code: string): EagerWrappersResult {
  const helpers = new Set(HELPERS.map((re) => re.exec(code)?.[1]).filter((name): name is string => !!name));
  if (helpers.size === 0) return { code, rewritten: 0, kept: 0 };
  const source = ts.createSourceFile('index.js', code, ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
  const edits: Array<{ start: number; end: number; text: string }> = [];
  let kept = 0;
  const visit = (node: ts.Node): void => {
    if (
      ts.isCallExpression(node) &&
      ts.isIdentifier(node.expression) &&
      helpers.has(node.expression.text) &&
      node.arguments.length === 1
    ) {
      const wrapper = node.arguments[0];
      if (ts.isArrowFunction(wrapper) && ts.isBlock(wrapper.body) && !wrapper.modifiers?.length) {
        if (readsOwnReceiver(wrapper.body)) kept++;
        else {
          const params = wrapper.parameters.map((p) => p.getText(source)).join(',');
          edits.push({
            start: wrapper.getStart(source),
            end: wrapper.body.getStart(source),
            text: `(function(${params})`,
          });
          edits.push({ start: wrapper.end, end: wrapper.end, text: ')' });
        }
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  let out = '';
  let at = 0;
  for (const edit of edits.sort((a, b) => a.start - b.start)) {
    out += code.slice(at, edit.start) + edit.text;
    at = edit.end;
  }
  return { code: out + code.slice(at), rewritten: edits.length / 2, kept };
}

/** Whether a body reads what an arrow takes from its scope (this, arguments, new.target, super). */
function readsOwnReceiver(body: ts.Node): boolean {
  let found = false;
  const visit = (node: ts.Node): void => {
    if (found) return;
    if (
      node.kind === ts.SyntaxKind.ThisKeyword ||
      node.kind === ts.SyntaxKind.SuperKeyword ||
      ts.isMetaProperty(node) ||
      (ts.isIdentifier(node) && node.text === 'arguments')
    ) {
      found = true;
      return;
    }
    // A function of its own has its own receiver (but a computed name is read in the scope around
    // it); an arrow shares the wrapper's. Class bodies are read: a field initializer counts.
    if (ts.isFunctionLike(node) && !ts.isArrowFunction(node)) {
      const name = (node as ts.SignatureDeclaration).name;
      if (name && ts.isComputedPropertyName(name)) visit(name);
      return;
    }
    ts.forEachChild(node, visit);
  };
  ts.forEachChild(body, visit);
  return found;
}
