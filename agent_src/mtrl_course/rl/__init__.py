"""The RL algorithm's shared parts, one home for every learner of the course.

Three policies are trained offline: the scripted stand-in (`local.stand_in_policy`, a
softmax-linear policy with a closed-form gradient), the tiny language model (`learner/`, token-level
gradients through a hand-written backward pass) and the coding lesson's stand-in
(`coding_agent.policy`). What makes each of them a GRPO learner is shared, and lives here once:

- `advantages`: a group's rewards to advantages (`group_advantages`), and the estimator switch
  (`Estimator`: GRPO's std scaling and 1/|o_i| length normalisation, the service's default as far
  as it is documented; Dr. GRPO, mean-only and no length normalisation, as the option);
- `objective`: the clipped surrogate's weight on each sampled token's (or turn's) gradient of
  log pi, for the service's `loss_fn` choices and clip bounds;
- `optim`: one Adam with decoupled weight decay and gradient-norm clipping; it descends the loss
  it is given (a learner that ascends J hands it -grad J).

What stays with each learner is only what differs between them: how log pi and its gradient are
computed (closed form, or a transformer's backward pass) and what an adapter is.
"""
