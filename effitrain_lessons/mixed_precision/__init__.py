"""Lesson 08, mixed precision: what 16 bits keep, what `torch.autocast` saves for backward, what a
`torch.amp` step holds a parameter, the gradients fp16 loses without a scaler, and the time 16 bits
take (`measure`), its figures (`figures`) and the quiz (`quiz`).
"""
