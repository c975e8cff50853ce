// Checks AgentCore CLI project files against the CLI's own zod schemas, offline.
//
// The full CLI cannot be installed everywhere the course runs (some of its dependencies are
// missing from the registry), but its published tarball ships the schemas `agentcore validate`
// uses. mtrl_course.deploy fetches that tarball and zod into a cache and runs this script:
//
//   node agentcore_schema_check.mjs <unpacked CLI package dir> <kind>=<json file> [...]
//
// kind is "project" (agentcore.json) or "targets" (aws-targets.json). Prints one JSON array
// with {kind, file, ok, issues: [{path, message, expected?}]} per file; `expected` lists the
// allowed values when the schema names them (zod's own message is then only "Invalid input").
// Exit status: 0 when every file passes, 1 when any fails, 2 when the arguments or the schema
// package are unusable.

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const SCHEMA_ENTRY = join('dist', 'schema', 'index.js');
const SCHEMA_BY_KIND = {
  project: 'AgentCoreProjectSpecSchema',
  targets: 'AwsDeploymentTargetsSchema',
};

function fail(message) {
  process.stderr.write(`agentcore_schema_check: ${message}\n`);
  process.exit(2);
}

function loadSchemas(packageDir) {
  // The schema module is CommonJS and requires "zod" by bare name, so it resolves zod from the
  // node_modules folders above the unpacked package.
  const require = createRequire(import.meta.url);
  try {
    return require(join(packageDir, SCHEMA_ENTRY));
  } catch (error) {
    fail(`cannot load ${join(packageDir, SCHEMA_ENTRY)}: ${error.message}`);
  }
}

function allowedValues(issue) {
  // An enum mismatch reports its options directly; a union (such as runtimeVersion, Python or
  // Node versions) reports them inside each branch's issues.
  if (Array.isArray(issue.values)) {
    return issue.values.map(String);
  }
  if (Array.isArray(issue.errors)) {
    return issue.errors.flat().flatMap(allowedValues);
  }
  return [];
}

function describeIssue(issue) {
  const described = { path: issue.path.join('.'), message: issue.message };
  const expected = allowedValues(issue);
  if (expected.length > 0) {
    described.expected = expected;
  }
  return described;
}

function checkFile(schemas, kind, file) {
  const schema = schemas[SCHEMA_BY_KIND[kind]];
  if (schema === undefined) {
    fail(`the CLI package exports no ${SCHEMA_BY_KIND[kind]} (needed for kind "${kind}")`);
  }
  let document;
  try {
    document = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    const issue = { path: '', message: `not readable JSON: ${error.message}` };
    return { kind, file, ok: false, issues: [issue] };
  }
  const result = schema.safeParse(document);
  const issues = result.success
    ? []
    : result.error.issues.map(describeIssue);
  return { kind, file, ok: result.success, issues };
}

function main(argv) {
  const [packageDir, ...specs] = argv;
  if (!packageDir || specs.length === 0) {
    fail('usage: agentcore_schema_check.mjs <CLI package dir> <project|targets>=<file> [...]');
  }
  const schemas = loadSchemas(packageDir);
  const results = specs.map(spec => {
    const cut = spec.indexOf('=');
    const kind = cut > 0 ? spec.slice(0, cut) : '';
    if (!(kind in SCHEMA_BY_KIND)) {
      const kinds = Object.keys(SCHEMA_BY_KIND).join(', ');
      fail(`"${spec}" is not <kind>=<file> with kind one of ${kinds}`);
    }
    return checkFile(schemas, kind, spec.slice(cut + 1));
  });
  process.stdout.write(`${JSON.stringify(results)}\n`);
  process.exit(results.every(result => result.ok) ? 0 : 1);
}

main(process.argv.slice(2));
