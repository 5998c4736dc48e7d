OK_FORMAT = True

test = {   'name': 'q_effective_batch',
    'points': 2,
    'suites': [   {   'cases': [   {   'code': '>>> import contextlib\n'
                                               '>>> import io\n'
                                               '>>> import tempfile\n'
                                               '>>> from transformers import Trainer, TrainingArguments\n'
                                               '>>> from effitrain_lessons.checks import check_prediction\n'
                                               '>>> from effitrain_lessons.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.i18n import phrase\n'
                                               '>>> from effitrain_lessons.models import tiny_bert\n'
                                               '>>> from effitrain_lessons.trainer import StepMeter\n'
                                               '>>> check_meter = StepMeter()\n'
                                               '>>> check_trainer = Trainer(model=tiny_bert(), args=TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=4, '
                                               "gradient_accumulation_steps=3, num_train_epochs=2, save_strategy='no', report_to='none', disable_tqdm=True, use_cpu=True), "
                                               "train_dataset=tokenized_mrpc()['train'].select(range(96)), callbacks=[check_meter])\n"
                                               '>>> with contextlib.redirect_stdout(io.StringIO()):\n'
                                               '...     _ = check_trainer.train()\n'
                                               ">>> check_prediction('predicted_effective_batch', predicted_effective_batch, check_meter.rows_per_step[0], why=phrase('Counted: the rows of the "
                                               "micro-batches in one optimizer step.'))\n"
                                               '>>> check_prediction(\'predicted_optimizer_steps\', predicted_optimizer_steps, check_trainer.state.global_step, why=phrase("Counted: Trainer\'s '
                                               'optimizer steps over the 2 epochs."))\n',
                                       'hidden': False,
                                       'locked': False},
                                   {   'code': '>>> import contextlib\n'
                                               '>>> import io\n'
                                               '>>> import tempfile\n'
                                               '>>> from transformers import Trainer, TrainingArguments\n'
                                               '>>> from effitrain_lessons.data import tokenized_mrpc\n'
                                               '>>> from effitrain_lessons.models import tiny_bert\n'
                                               '>>> practice_trainer = Trainer(model=tiny_bert(), args=TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=4, '
                                               "gradient_accumulation_steps=3, num_train_epochs=2, save_strategy='no', report_to='none', disable_tqdm=True, use_cpu=True), "
                                               "train_dataset=tokenized_mrpc()['train'].select(range(96)))\n"
                                               '>>> with contextlib.redirect_stdout(io.StringIO()):\n'
                                               '...     _ = practice_trainer.train()\n'
                                               '>>> assert type(predicted_optimizer_steps) is int and type(predicted_effective_batch) is int\n'
                                               '>>> assert predicted_optimizer_steps == practice_trainer.state.global_step\n'
                                               '>>> assert predicted_effective_batch == 96 * 2 // practice_trainer.state.global_step\n',
                                       'hidden': True,
                                       'locked': False}],
                      'scored': True,
                      'setup': '',
                      'teardown': '',
                      'type': 'doctest'}]}
