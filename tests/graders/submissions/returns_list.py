def vector_add(a, b):
    return [x + y for x, y in zip(a.tolist(), b.tolist(), strict=True)]
