// CICUData has nothing to call: it defines ICU's data symbol for the release link (icu_data.c says why).
// SwiftPM wants a public header directory for every C target.
#pragma once
