OK_FORMAT = True

test = {   'name': 'q_memory_budget',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from transformers import TrainingArguments\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               ">>> got = {'kind': type(budget_args).__name__, 'batch': None, 'accumulation': None}\n"
                                               '>>> if type(budget_args) is TrainingArguments:\n'
                                               "...     got['batch'] = budget_args.per_device_train_batch_size\n"
                                               "...     got['accumulation'] = budget_args.gradient_accumulation_steps\n"
                                               '>>> want = {}\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['kind'] == 'TrainingArguments', phrase('budget_args should be a TrainingArguments(...)')\n"
                                               ">>> assert type(got['batch']) is int and type(got['accumulation']) is int, phrase('the batch size and the accumulation steps are whole numbers')\n"
                                               ">>> assert got['batch'] * got['accumulation'] == 32, phrase('your arguments train on {batch} x {accumulation} = {effective} pairs per optimizer step; "
                                               "the effective batch should be 32', batch=got['batch'], accumulation=got['accumulation'], effective=got['batch'] * got['accumulation'])\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from transformers import TrainingArguments\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.i18n import phrase\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import measure_step\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert\n'
                                               ">>> got = {'kind': type(budget_args).__name__, 'checkpointing': None, 'batch': None, 'saved': None}\n"
                                               '>>> if type(budget_args) is TrainingArguments:\n'
                                               "...     got['checkpointing'] = budget_args.activation_checkpointing\n"
                                               "...     got['batch'] = budget_args.per_device_train_batch_size\n"
                                               ">>> if type(got['checkpointing']) is bool and type(got['batch']) is int:\n"
                                               '...     check_model = tiny_bert(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)\n'
                                               "...     if got['checkpointing']:\n"
                                               '...         check_model.activation_checkpointing_enable()\n'
                                               '...     _ = check_model.train()\n'
                                               "...     got['saved'] = measure_step(check_model, tokenized_mrpc()['train'][:got['batch']]).saved_bytes\n"
                                               '>>> want = {}\n'
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['kind'] == 'TrainingArguments' and type(got['checkpointing']) is bool, phrase('budget_args should be a TrainingArguments(...) with "
                                               "activation_checkpointing True or False')\n"
                                               ">>> assert type(got['batch']) is int, phrase('per_device_train_batch_size is a whole number')\n"
                                               ">>> check_state = phrase('with checkpointing on') if got['checkpointing'] else phrase('with checkpointing off')\n"
                                               ">>> assert got['saved'] <= 2 ** 20, phrase('measured: a micro-batch of {batch} {state} saves {mib:.2f} MiB of activations, over the 1 MiB budget', "
                                               "batch=got['batch'], state=check_state, mib=got['saved'] / 2 ** 20)\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from transformers import TrainingArguments\n'
                                               '>>> from effitrain_lessons.shared.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.shared.judging import plain\n'
                                               '>>> from effitrain_lessons.shared.memory import measure_step\n'
                                               '>>> from effitrain_lessons.shared.models import tiny_bert\n'
                                               ">>> got = {'kind': type(budget_args).__name__, 'checkpointing': None, 'batch': None}\n"
                                               '>>> if type(budget_args) is TrainingArguments:\n'
                                               "...     got['checkpointing'] = budget_args.activation_checkpointing\n"
                                               "...     got['batch'] = budget_args.per_device_train_batch_size\n"
                                               "...     got['accumulation'] = budget_args.gradient_accumulation_steps\n"
                                               "...     got['processes'] = budget_args.world_size\n"
                                               '>>> want = {}\n'
                                               ">>> want['saved'] = {}\n"
                                               '>>> for checkpointing in (False, True):\n'
                                               '...     hidden_model = tiny_bert()\n'
                                               '...     if checkpointing:\n'
                                               '...         hidden_model.activation_checkpointing_enable()\n'
                                               '...     _ = hidden_model.train()\n'
                                               '...     for batch in (1, 2, 4, 8, 16, 32):\n'
                                               "...         want['saved'][f'{batch} {checkpointing}'] = measure_step(hidden_model, tokenized_mrpc()['validation'][-batch:]).saved_bytes\n"
                                               '>>> got, want = (plain(got), plain(want))\n'
                                               ">>> assert got['kind'] == 'TrainingArguments' and type(got['checkpointing']) is bool\n"
                                               ">>> assert type(got['batch']) is int and type(got['accumulation']) is int\n"
                                               ">>> assert type(got['processes']) is int\n"
                                               ">>> assert got['batch'] * got['accumulation'] * got['processes'] == 32\n"
                                               '>>> assert want[\'saved\'][f"{got[\'batch\']} {got[\'checkpointing\']}"] <= 2 ** 20\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
