OK_FORMAT = True

test = {   'name': 'q_checkpoint_on',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.memory import format_bytes, measure_step\n'
                                               '>>> from effitrain_lessons.models import tiny_bert\n'
                                               '>>> _ = torch.manual_seed(0)\n'
                                               '>>> check_bert = tiny_bert(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)\n'
                                               '>>> check_bert.config.use_cache = False\n'
                                               '>>> _ = check_bert.train()\n'
                                               ">>> check_batch = tokenized_mrpc()['train'][:8]\n"
                                               '>>> check_plain = measure_step(check_bert, check_batch)\n'
                                               '>>> check_grads = [p.grad.clone() for p in check_bert.parameters()]\n'
                                               '>>> turn_on_checkpointing(check_bert)\n'
                                               '>>> check_after = measure_step(check_bert, check_batch)\n'
                                               '>>> assert check_after.saved_bytes <= 0.15 * check_plain.saved_bytes, phrase("measured: after turn_on_checkpointing the step keeps {kept} of '
                                               'activations, {share:.0%} of the plain step\'s {plain}; with checkpointing on it keeps at most 15 %", kept=format_bytes(check_after.saved_bytes), '
                                               'share=check_after.saved_bytes / check_plain.saved_bytes, plain=format_bytes(check_plain.saved_bytes))\n'
                                               '>>> check_change = max(((p.grad - g).abs().max().item() for p, g in zip(check_bert.parameters(), check_grads)))\n'
                                               ">>> assert check_change <= 1e-06, phrase('measured: the gradients changed by up to {change:.1e}; checkpointing must leave them as they were', "
                                               'change=check_change)\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.memory import measure_step\n'
                                               '>>> from effitrain_lessons.models import tiny_bert\n'
                                               '>>> _ = torch.manual_seed(3)\n'
                                               '>>> hidden_bert = tiny_bert(num_hidden_layers=6)\n'
                                               '>>> hidden_bert.config.use_cache = False\n'
                                               '>>> _ = hidden_bert.train()\n'
                                               ">>> hidden_batch = tokenized_mrpc()['validation'][:12]\n"
                                               '>>> _ = torch.manual_seed(4)\n'
                                               '>>> hidden_plain = measure_step(hidden_bert, hidden_batch)\n'
                                               '>>> hidden_grads = [p.grad.clone() for p in hidden_bert.parameters()]\n'
                                               '>>> turn_on_checkpointing(hidden_bert)\n'
                                               '>>> _ = torch.manual_seed(4)\n'
                                               '>>> hidden_after = measure_step(hidden_bert, hidden_batch)\n'
                                               '>>> assert hidden_after.saved_bytes <= 0.15 * hidden_plain.saved_bytes\n'
                                               '>>> assert hidden_after.flops > 1.25 * hidden_plain.flops\n'
                                               '>>> assert all((torch.equal(p.grad, g) for p, g in zip(hidden_bert.parameters(), hidden_grads)))\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
