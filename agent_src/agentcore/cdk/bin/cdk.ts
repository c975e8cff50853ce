#!/usr/bin/env node
// The CDK app `agentcore deploy` runs (as `node dist/bin/cdk.js`, from agentcore/cdk/): reads
// ../agentcore.json and ../aws-targets.json and defines one stack per deployment target.
import * as path from 'path';
import { ConfigIO } from '@aws/agentcore-cdk';
import { App } from 'aws-cdk-lib';
import { WordleAgentStack, stackNameFor } from '../lib/wordle-stack';

// The CLI starts the app with agentcore/cdk/ as the working directory.
const CONFIG_DIR = path.resolve(process.cwd(), '..');

async function main(): Promise<void> {
  const config = new ConfigIO({ baseDir: CONFIG_DIR });
  const spec = await config.readProjectSpec();
  const targets = await config.readAWSDeploymentTargets();
  if (targets.length === 0) {
    throw new Error(
      `no deployment target in ${path.join(CONFIG_DIR, 'aws-targets.json')}; ` +
        'add your account and Region'
    );
  }
  const app = new App();
  for (const target of targets) {
    new WordleAgentStack(app, stackNameFor(spec.name, target.name), {
      spec,
      env: { account: target.account, region: target.region },
      description: `AgentCore resources of ${spec.name} (target ${target.name}, ${target.region})`,
      // The CLI finds its stacks by these two tags (status, invoke, teardown).
      tags: { 'agentcore:project-name': spec.name, 'agentcore:target-name': target.name },
    });
  }
  app.synth();
}

main().catch((error: unknown) => {
  const reason = error instanceof Error ? error.message : error;
  console.error('CDK synthesis of the WordleMTRL project failed:', reason);
  process.exit(1);
});
