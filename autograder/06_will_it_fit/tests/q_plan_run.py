OK_FORMAT = True

test = {   'name': 'q_plan_run',
    'points': 3,
    'suites': [   {   'cases': [   {   'code': '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.memory import format_bytes\n'
                                               '>>> from effitrain_lessons.plan import GPUS, estimate, supports_bf16\n'
                                               ">>> yours = plan_run('bert-large-uncased', 'T4', 512, 512)\n"
                                               ">>> assert yours is not None, phrase('plan_run returns nothing yet: write its body.')\n"
                                               ">>> assert type(yours) is tuple and len(yours) == 2, phrase('plan_run should return a pair (precision, accumulation); it returned a {kind}.', "
                                               'kind=type(yours).__name__)\n'
                                               '>>> assert yours[0] in (\'bf16\', \'fp16\'), phrase(\'The precision is "bf16" or "fp16"; it is {precision!r}.\', precision=yours[0])\n'
                                               ">>> assert supports_bf16('T4') or yours[0] != 'bf16', phrase('You planned bf16 on a T4, which has no bf16. Re-read what each lever buys: what does a "
                                               "T4 train in?')\n"
                                               ">>> assert type(yours[1]) is int and yours[1] >= 1 and (512 % yours[1] == 0), phrase('The accumulation should be a whole number that divides the batch "
                                               "(512); it is {k!r}.', k=yours[1])\n"
                                               ">>> assert estimate('bert-large-uncased', batch=512, seq=512, accumulation=yours[1], precision=yours[0], checkpointing=True, "
                                               'attention=\'sdpa\').fits(\'T4\'), phrase("With {k} micro-batches of {micro} a step needs more than a T4\'s {memory}: too few. Are gradient '
                                               'checkpointing and SDPA on?", k=yours[1], micro=512 // yours[1], memory=format_bytes(GPUS[\'T4\']))\n'
                                               ">>> assert not any((estimate('bert-large-uncased', batch=512, seq=512, accumulation=fewer, precision=yours[0], checkpointing=True, "
                                               "attention='sdpa').fits('T4') for fewer in range(1, yours[1]) if 512 % fewer == 0)), phrase('With {k} micro-batches a step fits, but fewer fit too: too "
                                               "many. Did you plan it with gradient checkpointing and SDPA attention, and try every divisor from 1 up?', k=yours[1])\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from effitrain_lessons.plan import estimate\n'
                                               ">>> for model, gpu, batch, seq, precision in (('gpt2-medium', 'L4', 144, 1024, 'bf16'), ('llama-3.2-1b-shaped', 'A100-40GB', 96, 2048, 'bf16'), "
                                               "('llama-3.2-1b-shaped', 'T4', 8, 2048, 'fp16')):\n"
                                               '...     fitting = [k for k in range(1, batch + 1) if batch % k == 0 and estimate(model, batch=batch, seq=seq, accumulation=k, precision=precision, '
                                               "checkpointing=True, attention='sdpa').fits(gpu)]\n"
                                               '...     answer = plan_run(model, gpu, batch, seq)\n'
                                               '...     assert type(answer) is tuple and answer == (precision, fitting[0] if fitting else None)\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
