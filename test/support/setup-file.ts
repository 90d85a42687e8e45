// Per-worker setup: password hashing at a low cost so tests stay fast (the real cost is
// asserted in test/service/domain/passwords.test.ts and measured in bench/).
import { setPasswordParamsForTesting } from '../../service/domain/passwords';

setPasswordParamsForTesting({ memoryCost: 64, timeCost: 1, parallelism: 1 });
