// The one stack per deployment target: the AgentCore resources agentcore.json describes, built by
// the CLI's L3 construct, plus a synth-time check that the runtime role can reach the Job Runtime.
import { AgentCoreApplication, type AgentCoreProjectSpec } from '@aws/agentcore-cdk';
import { Annotations, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';

// Rollouts sample from the policy model and report rewards through the SageMaker Job Runtime;
// a runtime role without this managed policy fails every rollout with AccessDenied.
export const JOB_RUNTIME_POLICY_ARN = 'arn:aws:iam::aws:policy/AmazonSageMakerJobRuntimeAccess';

// Resources this app does not wire up (they need state from earlier deploys or extra inputs).
const UNSUPPORTED_COLLECTIONS = ['agentCoreGateways', 'harnesses', 'payments'];

export interface WordleAgentStackProps extends StackProps {
  readonly spec: AgentCoreProjectSpec;
}

/** The CLI finds the synthesized template by this name: AgentCore-<project>-<target>. */
export function stackNameFor(projectName: string, targetName: string): string {
  const dashed = (name: string): string => name.replace(/_/g, '-');
  return `AgentCore-${dashed(projectName)}-${dashed(targetName)}`;
}

/** Fail the synth early, naming the fix, instead of deploying a runtime that cannot train. */
export function checkSpec(spec: AgentCoreProjectSpec): void {
  const fields = spec as unknown as Record<string, unknown>;
  for (const key of UNSUPPORTED_COLLECTIONS) {
    const value = fields[key];
    if (Array.isArray(value) && value.length > 0) {
      throw new Error(
        `agentcore.json lists ${key}, which this project's CDK app (agentcore/cdk) ` +
          'does not deploy; ' +
          'remove them, or generate the full CDK app with `agentcore create` and merge it in'
      );
    }
  }
  for (const runtime of spec.runtimes) {
    if (runtime.executionRoleArn) {
      continue; // an imported role is checked (as a warning) on the stack
    }
    if (!(runtime.additionalPolicies ?? []).includes(JOB_RUNTIME_POLICY_ARN)) {
      throw new Error(
        `runtime "${runtime.name}" in agentcore.json has no "${JOB_RUNTIME_POLICY_ARN}" in ` +
          'additionalPolicies; without it every training rollout fails with AccessDenied'
      );
    }
  }
}

export class WordleAgentStack extends Stack {
  readonly application: AgentCoreApplication;

  constructor(scope: Construct, id: string, props: WordleAgentStackProps) {
    super(scope, id, props);
    checkSpec(props.spec);
    // The construct creates each runtime's execution role and attaches the managed policies
    // listed in the runtime's additionalPolicies (the Job Runtime policy among them).
    this.application = new AgentCoreApplication(this, 'Application', { spec: props.spec });
    for (const runtime of props.spec.runtimes) {
      if (runtime.executionRoleArn) {
        Annotations.of(this).addWarning(
          `runtime "${runtime.name}" uses the existing role ${runtime.executionRoleArn}; ` +
            `CDK cannot change it, so it must already have ${JOB_RUNTIME_POLICY_ARN}`
        );
      }
    }
  }
}
