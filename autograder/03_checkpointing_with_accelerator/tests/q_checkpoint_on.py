OK_FORMAT = True

test = {   'name': 'q_checkpoint_on',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import format_bytes, measure_step\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert\n'
                                               '>>> _ = torch.manual_seed(0)\n'
                                               '>>> check_bert = tiny_bert(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)\n'
                                               '>>> check_bert.config.use_cache = False\n'
                                               '>>> _ = check_bert.train()\n'
                                               ">>> check_batch = tokenized_mrpc()['train'][:8]\n"
                                               '>>> check_plain = measure_step(check_bert, check_batch)\n'
                                               '>>> check_grads = [p.grad.clone() for p in check_bert.parameters()]\n'
                                               '>>> turn_on_checkpointing(check_bert)\n'
                                               '>>> check_after = measure_step(check_bert, check_batch)\n'
                                               ">>> got = {'saved': check_after.saved_bytes, 'plain_saved': check_plain.saved_bytes, 'kept': format_bytes(check_after.saved_bytes), 'plain': "
                                               "format_bytes(check_plain.saved_bytes), 'change': torch.stack([(p.grad - g).abs().max() for p, g in zip(check_bert.parameters(), "
                                               'check_grads)]).max().item()}\n'
                                               '>>> want = {}\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               '>>> assert got[\'saved\'] <= 0.15 * got[\'plain_saved\'], phrase("measured: after turn_on_checkpointing the step keeps {kept} of activations, '
                                               '{share:.0%} of the plain step\'s {plain}; with checkpointing on it keeps at most 15 %", kept=got[\'kept\'], share=got[\'saved\'] / '
                                               "got['plain_saved'], plain=got['plain'])\n"
                                               ">>> assert got['change'] <= 1e-06, phrase('measured: the gradients changed by up to {change:.1e}; checkpointing must leave them as they were', "
                                               "change=got['change'])\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import torch\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import measure_step\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert\n'
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
                                               ">>> got = {'saved': hidden_after.saved_bytes, 'plain_saved': hidden_plain.saved_bytes, 'flops': hidden_after.flops, 'plain_flops': hidden_plain.flops, "
                                               "'same_gradients': all((torch.equal(p.grad, g) for p, g in zip(hidden_bert.parameters(), hidden_grads)))}\n"
                                               '>>> want = {}\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['saved'] <= 0.15 * got['plain_saved']\n"
                                               ">>> assert got['flops'] > 1.25 * got['plain_flops']\n"
                                               ">>> assert got['same_gradients'] is True\n",
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
