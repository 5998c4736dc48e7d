OK_FORMAT = True

test = {   'name': 'q_memory_budget',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> from transformers import TrainingArguments\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               ">>> assert type(budget_args) is TrainingArguments, phrase('budget_args should be a TrainingArguments(...)')\n"
                                               ">>> assert type(budget_args.per_device_train_batch_size) is int and type(budget_args.gradient_accumulation_steps) is int, phrase('the batch size and "
                                               "the accumulation steps are whole numbers')\n"
                                               ">>> assert budget_args.per_device_train_batch_size * budget_args.gradient_accumulation_steps == 32, phrase('your arguments train on {batch} x "
                                               "{accumulation} = {effective} pairs per optimizer step; the effective batch should be 32', batch=budget_args.per_device_train_batch_size, "
                                               'accumulation=budget_args.gradient_accumulation_steps, effective=budget_args.per_device_train_batch_size * budget_args.gradient_accumulation_steps)\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> from transformers import TrainingArguments\n'
                                               '>>> from effitrain_lessons.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.memory import measure_step\n'
                                               '>>> from effitrain_lessons.models import tiny_bert\n'
                                               ">>> assert type(budget_args) is TrainingArguments and type(budget_args.activation_checkpointing) is bool, phrase('budget_args should be a "
                                               "TrainingArguments(...) with activation_checkpointing True or False')\n"
                                               ">>> assert type(budget_args.per_device_train_batch_size) is int, phrase('per_device_train_batch_size is a whole number')\n"
                                               '>>> check_model = tiny_bert(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)\n'
                                               '>>> if budget_args.activation_checkpointing:\n'
                                               '...     check_model.activation_checkpointing_enable()\n'
                                               '>>> _ = check_model.train()\n'
                                               ">>> check_saved = measure_step(check_model, tokenized_mrpc()['train'][:budget_args.per_device_train_batch_size]).saved_bytes\n"
                                               ">>> check_state = phrase('with checkpointing on') if budget_args.activation_checkpointing else phrase('with checkpointing off')\n"
                                               ">>> assert check_saved <= 2 ** 20, phrase('measured: a micro-batch of {batch} {state} saves {mib:.2f} MiB of activations, over the 1 MiB budget', "
                                               'batch=budget_args.per_device_train_batch_size, state=check_state, mib=check_saved / 2 ** 20)\n',
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
