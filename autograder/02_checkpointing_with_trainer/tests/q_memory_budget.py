OK_FORMAT = True

test = {   'name': 'q_memory_budget',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from transformers import TrainingArguments\n'
                                               ">>> assert type(budget_args) is TrainingArguments, 'budget_args should be a TrainingArguments(...)'\n"
                                               ">>> assert type(budget_args.per_device_train_batch_size) is int and type(budget_args.gradient_accumulation_steps) is int, 'the batch size and the "
                                               "accumulation steps are whole numbers'\n"
                                               ">>> assert budget_args.per_device_train_batch_size * budget_args.gradient_accumulation_steps == 32, f'your arguments train on "
                                               '{budget_args.per_device_train_batch_size} x {budget_args.gradient_accumulation_steps} = {budget_args.per_device_train_batch_size * '
                                               "budget_args.gradient_accumulation_steps} pairs per optimizer step; the effective batch should be 32'\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from transformers import TrainingArguments\n'
                                               '>>> from effitrain_lessons.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.memory import measure_step\n'
                                               '>>> from effitrain_lessons.models import tiny_bert\n'
                                               ">>> assert type(budget_args) is TrainingArguments and type(budget_args.activation_checkpointing) is bool, 'budget_args should be a "
                                               "TrainingArguments(...) with activation_checkpointing True or False'\n"
                                               ">>> assert type(budget_args.per_device_train_batch_size) is int, 'per_device_train_batch_size is a whole number'\n"
                                               '>>> check_model = tiny_bert(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)\n'
                                               '>>> if budget_args.activation_checkpointing:\n'
                                               '...     check_model.activation_checkpointing_enable()\n'
                                               '>>> _ = check_model.train()\n'
                                               ">>> check_saved = measure_step(check_model, tokenized_mrpc()['train'][:budget_args.per_device_train_batch_size]).saved_bytes\n"
                                               ">>> check_state = 'on' if budget_args.activation_checkpointing else 'off'\n"
                                               ">>> assert check_saved <= 2 ** 20, f'measured: a micro-batch of {budget_args.per_device_train_batch_size} with checkpointing {check_state} saves "
                                               "{check_saved / 2 ** 20:.2f} MiB of activations, over the 1 MiB budget'\n",
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from transformers import TrainingArguments\n'
                                               '>>> from effitrain_lessons.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.memory import measure_step\n'
                                               '>>> from effitrain_lessons.models import tiny_bert\n'
                                               '>>> assert type(budget_args) is TrainingArguments and type(budget_args.activation_checkpointing) is bool\n'
                                               '>>> assert type(budget_args.per_device_train_batch_size) is int and type(budget_args.gradient_accumulation_steps) is int\n'
                                               '>>> hidden_model = tiny_bert()\n'
                                               '>>> if budget_args.activation_checkpointing:\n'
                                               '...     hidden_model.activation_checkpointing_enable()\n'
                                               '>>> _ = hidden_model.train()\n'
                                               ">>> assert measure_step(hidden_model, tokenized_mrpc()['validation'][-budget_args.per_device_train_batch_size:]).saved_bytes <= 2 ** 20\n"
                                               '>>> assert budget_args.per_device_train_batch_size * budget_args.gradient_accumulation_steps * budget_args.world_size == 32\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
